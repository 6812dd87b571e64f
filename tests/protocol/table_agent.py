"""The table agent (see table_app.py) on stdio: ``python table_agent.py``."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from table_app import make_app

from acplink import run_agent

if __name__ == "__main__":
    run_agent(make_app()[0])
