"""The storage contract (DESIGN §4) both sides share without Spark: where layout files live, how their
columns are named, and how measure cells are read and combined."""
