// Placeholder until the first layer lands; keeps the nn library non-empty.
