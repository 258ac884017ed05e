from reprolab.cli import main

raise SystemExit(main())
