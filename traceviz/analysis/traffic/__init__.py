"""Memory traffic: the bytes each kernel moved, measured or estimated from shapes."""
