"""The checker: the policy language, the engines, findings, outputs and commands, over one entry point, `check`."""
