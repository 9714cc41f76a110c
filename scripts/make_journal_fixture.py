"""Make the journal fixture of today's format under tests/experiment/data/.

A small live search (TinyRegression, hypersched, 2 local workers, TPE) with its journal
and checkpoints, killed with SIGKILL part-way, as a search whose kernel died is: what every
later version must open, resume and report the same from. Run once per journal format:

    python scripts/make_journal_fixture.py

It writes ``tests/experiment/data/format-<FORMAT>/`` (the journal, the checkpoints and
``expected.json``: each trial's configuration and metrics as this version opens them).
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from hypersched_nb.experiment.journal import FORMAT

ROOT = Path(__file__).resolve().parent.parent
SEARCH = """
import sys
import optuna
from hypersched_nb import Experiment
from hypersched_nb.testing.trainables import TinyRegression

if __name__ == "__main__":
    space = {"lr": optuna.distributions.FloatDistribution(1e-3, 0.5, log=True), "sleep": 0.2}
    exp = Experiment(TinyRegression, space, metric="loss", mode="min", deadline=120,
                     max_epochs=8, policy="hypersched", cluster=2, seed=0,
                     checkpoint_dir=sys.argv[1], points_to_evaluate=[{"lr": 0.1}])
    exp.start()
    exp.wait()
"""


def main() -> None:
    folder = ROOT / "tests" / "experiment" / "data" / f"format-{FORMAT}"
    shutil.rmtree(folder, ignore_errors=True)
    folder.parent.mkdir(parents=True, exist_ok=True)
    script = folder.parent / "_search.py"
    script.write_text(SEARCH)
    proc = subprocess.Popen([sys.executable, str(script), str(folder)], start_new_session=True)
    journal = folder / "journal.jsonl"
    try:
        while not journal.exists() or journal.read_text().count('"type":"Result"') < 24:
            time.sleep(0.05)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        script.unlink()
    from hypersched_nb import Experiment

    opened = Experiment.open(folder)
    rows = [
        {"trial": r.trial_id, "state": r.state, "config": r.config, "metrics": list(r.metrics)}
        for r in opened.statistics().trials
    ]
    (folder / "expected.json").write_text(json.dumps(rows, indent=1) + "\n")
    print(f"{folder}: {len(rows)} trials, status {opened.statistics().status}")


if __name__ == "__main__":
    main()
