"""The Arrow Flight SQL front end (`precube serve --flight-port`): answers as Arrow record batches."""
