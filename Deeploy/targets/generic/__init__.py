"""The Generic (host C) platform."""
