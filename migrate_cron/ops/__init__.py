"""Operating the queue: status numbers, threshold checks and the duration strings operators
type (``24h``, ``7d``). Pure values in, pure values out; the store does the querying."""
