# The package gdnbench from the build tree (scripts/build.sh puts it in build/python), or from
# GDNBENCH_PYTHON_PATH.
import os
import sys

_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.environ.get("GDNBENCH_PYTHON_PATH", os.path.join(_root, "build", "python")))
