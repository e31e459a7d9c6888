from agentprocess_conformance.cli import main

raise SystemExit(main())
