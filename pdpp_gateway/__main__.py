"""``python -m pdpp_gateway`` is the ``pdpp-gateway`` command."""

import sys

from pdpp_gateway.cli import main

sys.exit(main())
