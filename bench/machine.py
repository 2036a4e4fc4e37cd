"""The machine a benchmark ran on, as its JSON reports it (the encoder's speed changes 2-3x with VNNI or bfloat16)."""

from __future__ import annotations

import platform
import re
import subprocess


def cpu_model() -> str:
    """lscpu's model name, the CPU count and the flags that change the encoder's speed; the processor Python names where
    lscpu is missing."""
    try:
        described = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
    except OSError:
        return platform.processor() or platform.machine()
    model = re.search(r"^Model name:\s*(.+)$", described, re.M)
    flags_line = re.search(r"^Flags:\s*(.+)$", described, re.M)
    flags = set(flags_line.group(1).split()) if flags_line else set()
    notable = [flag for flag in ("avx2", "avx512_vnni", "avx512_bf16", "amx_tile", "avx_vnni") if flag in flags]
    cores = re.search(r"^CPU\(s\):\s*(\d+)$", described, re.M)
    return f"{model.group(1) if model else 'unknown'}, {cores.group(1) if cores else '?'} CPUs ({', '.join(notable)})"
