# setup.py — only the cffi extension (the metadata is in pyproject.toml): pdejit/_build.py
# compiles pdejit._pdejit_cffi against include/pdejit.h and libpdejit.so.
from setuptools import setup

setup(cffi_modules=["pdejit/_build.py:ffibuilder"])
