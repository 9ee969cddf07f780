// Keeps the common library non-empty before any shared experiment code exists.
