"""The demo agent on the store STORE_DIR, the first time it is started; every later start
(counted in COUNT_FILE) exits at once with code 5 (with ``hang``: never answers): a crash
loop for the recovery tests.

    python crashy_agent.py COUNT_FILE STORE_DIR [hang]
"""

import sys
from pathlib import Path

count_file = Path(sys.argv[1])
starts = int(count_file.read_text()) if count_file.exists() else 0
count_file.write_text(str(starts + 1))
if starts and sys.argv[3:] == ["hang"]:
    import time

    time.sleep(600)
if starts:
    print("crashy_agent: cannot start again", file=sys.stderr, flush=True)
    sys.exit(5)

from acplink.agent.serve import run_agent  # noqa: E402
from acplink.demo.agent import DemoStore, create_demo_agent  # noqa: E402

run_agent(create_demo_agent(DemoStore(Path(sys.argv[2]))))
