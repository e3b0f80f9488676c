"""Why a step costs what it does, in hardware terms: device peaks, FLOPs per op, the
roofline per kernel, the fusion ledger and the step bridge."""
