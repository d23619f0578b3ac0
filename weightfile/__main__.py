import sys

from weightfile.cli import main

sys.exit(main())
