/**
 * How long user tokens live, and the clock difference tolerated between their signer and a
 * verifier. Shared by the token code (src/tokens/jwt.ts) and the workspace aggregate, which
 * keeps a rotated-out signing key exactly as long as a token it signed can still be valid.
 */
export const TOKEN_LIFETIME_SECONDS = 48 * 60 * 60;
export const TOKEN_CLOCK_SKEW_SECONDS = 60;
/** A retired signing key verifies nothing after this long: every token it signed has expired. */
export const SIGNING_KEY_RETENTION_MS = (TOKEN_LIFETIME_SECONDS + TOKEN_CLOCK_SKEW_SECONDS) * 1000;
