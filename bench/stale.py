"""The sections of bench/RESULTS.md older than the code they measured, and why (``make bench-stale``).

A section is current when every file its run measured (``bench/RESULTS.code.json``, written by
``common.write_section``: the bench files and seqlab source the bench process loaded, the whole package for the
benches that measure in processes of their own) still has the sha256 it had then. Otherwise it is named with the
files that changed, or as recorded before sections kept that record; a stale section recorded on another CPU (or
ISA cap) than this machine's also names that CPU: sections named for a CPU class are re-recorded on that class, the
others here or there. The GPU sections are listed like any other: re-record them when a GPU is lent. Exit status 1
while any section is stale.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import RESULTS, code_file, file_sha256, section_pattern  # noqa: E402

from seqlab.base.machine import cpu_line  # noqa: E402

SHOWN = 6  # changed files named per section; the rest counted


def sections(text: str) -> dict[str, str]:
    """{section name: its script} of every section in RESULTS.md, in file order."""
    return {m.group(1): m.group(2) for m in re.finditer(r"<!-- (\S+):start (\S+) -->", text)}


def recorded_on(text: str) -> dict[str, str]:
    """{section name: the CPU line of its ``_Recorded`` line (model, cores, ISA flags, any cap)}."""
    out = {}
    for name in sections(text):
        block = section_pattern(name).search(text)  # common's reading of a section block, as write_section's
        line = re.search(r"^_Recorded [^;]+; (.+?); Python ", block.group(0), re.M) if block else None
        if line:
            out[name] = line.group(1)
    return out


def same_machine(a: str, b: str) -> bool:
    """Two CPU lines name the same CPU class: model, ISA flags and cap alike (the core count may differ)."""
    def drop_cores(line: str) -> str:
        return re.sub(r", \d+ cores;", ";", line)

    return drop_cores(a) == drop_cores(b)


def staleness(records: dict, names: dict[str, str]) -> dict[str, str | None]:
    """{section: why it is stale, or None where it is current}."""
    out: dict[str, str | None] = {}
    for name, script in names.items():
        record = records.get(name)
        if record is None:
            out[name] = f"recorded before sections kept the code they measured: run {script} again"
            continue
        changed = [path for path, sha in record["files"].items() if file_sha256(path) != sha]
        if changed:
            more = f" and {len(changed) - SHOWN} more" if len(changed) > SHOWN else ""
            out[name] = (f"{len(changed)} of its {len(record['files'])} files changed since "
                         f"{record['recorded']}: {', '.join(changed[:SHOWN])}{more}")
        else:
            out[name] = None
    return out


def main() -> int:
    code = code_file()
    records = json.loads(code.read_text(encoding="utf-8")) if code.exists() else {}
    text = RESULTS.read_text(encoding="utf-8")
    result, cpus, here = staleness(records, sections(text)), recorded_on(text), cpu_line()
    for name, why in result.items():
        elsewhere = name in cpus and not same_machine(cpus[name], here)
        where = f" (recorded on {cpus[name]}; this machine: {here})" if why is not None and elsewhere else ""
        print(f"{name}: {'current' if why is None else 'stale, ' + why}{where}")
    stale = sum(why is not None for why in result.values())
    print(f"{stale} of {len(result)} sections stale")
    return 1 if stale else 0


if __name__ == "__main__":
    raise SystemExit(main())
