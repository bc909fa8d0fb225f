"""Fill a PDF form's fields from a JSON object (a fixture of the conformance server's pdf-processing skill)."""

import json
import sys

print(json.dumps({"filled": json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}}))
