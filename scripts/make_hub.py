#!/usr/bin/env python3
"""Build the Hub folder of transformers' decoding loop: ``onmt_optimal.tools.hub_folder`` (``make hub``)."""
import sys

from onmt_optimal.tools.hub_folder import main

if __name__ == "__main__":
    sys.exit(main())
