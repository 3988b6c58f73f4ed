"""The stages composed: `analyze` reads a report, derives the roofline, runs the rules and builds the one result; the
stages after the rules are here too: `locate` places findings in the source, `entries` builds the result's kernel
entries, `ranking` orders where to start, `hostwall` replays the host timeline for each entry's wall-time saving."""
