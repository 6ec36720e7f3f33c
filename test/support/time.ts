/**
 * The fixed instant the resolution suites run at (a harness `clock: () => NOW`) and the grant
 * expiries either side of it, in seconds as `expiresAt` takes them: FUTURE is an hour after
 * NOW, PAST ten seconds before, so a grant with `expiresAt: PAST` is already expired when the
 * fixture is built and one with FUTURE holds until a test moves the clock past it.
 */
export const NOW = 1_750_000_000_000;
export const FUTURE = NOW / 1000 + 3600;
export const PAST = NOW / 1000 - 10;
