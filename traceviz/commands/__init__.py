"""One module per ``traceviz`` subcommand; each is a thin layer over the library."""
