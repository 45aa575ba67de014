import os
import sys

# The tests import the shared helpers beside them (tests/helpers.py).
sys.path.insert(0, os.path.dirname(__file__))
