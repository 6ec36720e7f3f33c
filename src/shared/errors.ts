/**
 * The few error classes of the service. Each carries the API status code of the failure
 * envelope; `src/http/errors.ts` maps them to HTTP. Deciders throw these for refusals, so a
 * refusal reads the same whether it ends a whole request or a single batch item.
 */
export type StatusCode =
  | 'INVALID_ARGUMENT'
  | 'FAILED_PRECONDITION'
  | 'UNAUTHENTICATED'
  | 'PERMISSION_DENIED'
  | 'NOT_FOUND'
  | 'ALREADY_EXISTS'
  | 'ABORTED'
  | 'RESOURCE_EXHAUSTED'
  | 'INTERNAL'
  | 'UNAVAILABLE';

/** The canonical gRPC-to-HTTP mapping (semantics §1). */
export const httpStatusOf: Record<StatusCode, number> = {
  INVALID_ARGUMENT: 400,
  FAILED_PRECONDITION: 400,
  UNAUTHENTICATED: 401,
  PERMISSION_DENIED: 403,
  NOT_FOUND: 404,
  ALREADY_EXISTS: 409,
  ABORTED: 409,
  RESOURCE_EXHAUSTED: 429,
  INTERNAL: 500,
  UNAVAILABLE: 503,
};

export class ApiError extends Error {
  constructor(
    readonly status: StatusCode,
    message: string,
    readonly details?: unknown,
    /** Overrides the HTTP status of `status` (413 for an oversized body, say). */
    readonly httpStatus: number = httpStatusOf[status],
    /** Extra fields of the failure envelope where the spec shows one (`code` on folders/delete). */
    readonly extra?: Record<string, unknown>,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

export const invalidArgument = (message: string, details?: unknown) =>
  new ApiError('INVALID_ARGUMENT', message, details);
export const failedPrecondition = (message: string) => new ApiError('FAILED_PRECONDITION', message);
export const unauthenticated = (message: string) => new ApiError('UNAUTHENTICATED', message);
export const permissionDenied = (message: string) => new ApiError('PERMISSION_DENIED', message);
export const notFound = (message: string, details?: unknown) => new ApiError('NOT_FOUND', message, details);
export const alreadyExists = (message: string) => new ApiError('ALREADY_EXISTS', message);
export const aborted = (message: string) => new ApiError('ABORTED', message);
export const resourceExhausted = (message: string) => new ApiError('RESOURCE_EXHAUSTED', message);

/**
 * A branch that cannot happen. Thrown loudly (logged with its stack, answered as INTERNAL)
 * so that a broken invariant is never mistaken for a user error.
 */
export class BugError extends Error {
  constructor(message: string) {
    super(`bug: ${message}`);
    this.name = 'BugError';
  }
}

export function assertNever(value: never, what = 'value'): never {
  throw new BugError(`unexpected ${what}: ${JSON.stringify(value)}`);
}

/**
 * A secret the service must use cannot be decrypted: its API key was deleted (its data key
 * destroyed), or the key store lost the data key. Never a crash: the caller reports it
 * (a webhook attempt fails with this message, a token request answers FAILED_PRECONDITION).
 */
export class SecretUnavailableError extends ApiError {
  constructor(message: string) {
    super('FAILED_PRECONDITION', message);
    this.name = 'SecretUnavailableError';
  }
}
