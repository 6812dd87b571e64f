"""Tools on top of the protocol layers: the recording proxy, trace analysis and the inspector."""
