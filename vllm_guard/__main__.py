from vllm_guard.cli import main

raise SystemExit(main())
