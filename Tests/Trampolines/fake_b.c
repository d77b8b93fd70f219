// A stand-in for a library older than the one the binary was built against: it lacks b_missing, which fake.def lists.
int b_one(void) { return 1; }
