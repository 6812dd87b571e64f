"""The tracing tests: their OTLP receiver (receiver.py) is importable by its name."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
