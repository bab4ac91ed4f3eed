"""The policy language, the engines and the command line."""
