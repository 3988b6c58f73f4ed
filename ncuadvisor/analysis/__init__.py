"""What the analysis derives before the rules run: the roofline and bound of each kernel (`roofline`, `ceilings`,
`needed`), a kernel's language (`language`), and the host timeline's model (`hosttrace`, `walltime`, `replay`)."""
