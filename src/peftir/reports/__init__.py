"""Reports: the numbers of a table (cells), the tables themselves (pandas) and the figures."""
