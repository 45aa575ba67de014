import os
import sys

# The tests import the float64 references in tests/reference.py.
sys.path.insert(0, os.path.dirname(__file__))
