"""Outputs: text, JSON, SARIF, HTML, ITF traces, generated tests and scripts, baselines and the report cache."""
