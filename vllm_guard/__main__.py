from vllm_guard.cli.main import main

raise SystemExit(main())
