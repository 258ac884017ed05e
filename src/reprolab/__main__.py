import os
import sys

from reprolab.cli import main

code = main()
# A stage process has written and closed all its outputs (atomically) and committed
# its tracking by now; skipping interpreter teardown (~1 s of freeing torch/Lightning
# state per process) keeps orchestration overhead down.
sys.stdout.flush()
sys.stderr.flush()
os._exit(code)
