"""The framework corpus's name for the one fake model server, ``examples/fake_model_server.py``.

Every framework's ``run.py`` runs in that framework's own virtual environment with this folder on
``PYTHONPATH`` and says ``import fake_models``; this module makes that name the server's module
itself (not a copy), so a script that replaces ``fake_models.policy`` replaces the policy the server
answers with.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))

import fake_model_server

sys.modules[__name__] = fake_model_server
