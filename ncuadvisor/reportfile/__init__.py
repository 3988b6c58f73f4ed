"""The .ncu-rep file format read without `ncu_report`: what a file is (`sniff`), its block layout (`blocks`), and the
scalar metrics of big reports read straight from it (`fastread`)."""
