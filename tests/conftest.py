import os
import sys

# The tests import helpers beside them (tests/reference.py, tests/sweep_configs.py).
sys.path.insert(0, os.path.dirname(__file__))
