"""A sweep's results folder: ``results.jsonl`` (one JSON record per finished point, the point's
flags nested) and ``results.csv`` (the same, one column per flag), both appended as points
finish; ``sweep.json`` names the config. A point's record is keyed by ``Point.key``; when a key
has several records (a retried point) the last one counts."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

from Deeploy.errors import DeeployError
from Deeploy.sweep.config import flag_names
from Deeploy.sweep.point import RESULT_FIELDS

__all__ = ["ResultStore", "DONE", "read_records"]

RECORDS, TABLE, MARK = "results.jsonl", "results.csv", "sweep.json"
# the statuses a re-run skips (--retry-failed: "ok" only); a point "lost" with its Ray worker always runs again
DONE = ("ok", "fail", "timeout", "crash")


def read_records(folder: str | Path) -> dict[str, dict]:
    """Key -> the last record of that key in ``folder``'s ``results.jsonl`` (a line torn by a
    killed sweep is ignored)."""
    path = Path(folder) / RECORDS
    if not path.is_file():
        raise DeeployError(f"'{folder}' holds no sweep results ({RECORDS}); run `deeploy sweep CONFIG -o {folder}`")
    records = {}
    for line in path.read_text().splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and "key" in record:
            records[record["key"]] = record
    return records


class ResultStore:
    """The results folder ``folder``: created, or resumed if a sweep wrote it."""

    def __init__(self, folder: str | Path, config: str | Path):
        self.folder = Path(folder)
        if self.folder.exists() and not self.folder.is_dir():
            raise DeeployError(f"results folder '{folder}' is a file; name a folder")
        if self.folder.is_dir() and any(self.folder.iterdir()) and not (self.folder / MARK).is_file():
            raise DeeployError(f"results folder '{folder}' holds files a sweep did not write; "
                               "name a new or empty folder (or one an earlier sweep wrote, to resume it)")
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            (self.folder / MARK).write_text(json.dumps({"config": str(Path(config).resolve())}) + "\n")
        except OSError as exc:
            raise DeeployError(f"cannot write the results folder '{folder}': {exc.strerror or exc}") from None
        self.records = read_records(self.folder) if (self.folder / RECORDS).is_file() else {}
        self.columns = ["key", "network", "platform", *flag_names(), *RESULT_FIELDS, "model", "version"]

    def append(self, record: dict) -> None:
        """Append ``record`` to both files, flushed to disk before returning."""
        self.records[record["key"]] = record
        with open(self.folder / RECORDS, "a") as f:
            f.write(json.dumps(record) + "\n")
            f.flush()
            os.fsync(f.fileno())
        table = self.folder / TABLE
        new = not table.is_file() or table.stat().st_size == 0
        with open(table, "a", newline="") as f:
            writer = csv.DictWriter(f, self.columns, extrasaction="ignore")
            if new:
                writer.writeheader()
            writer.writerow({**record, **record.get("flags", {})})
            f.flush()
            os.fsync(f.fileno())
