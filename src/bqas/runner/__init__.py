"""Scenario runner: load a YAML scenario, grade its dataset, store results, summarise, gate CI."""
