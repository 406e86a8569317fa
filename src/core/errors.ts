/**
 * Typed errors. Anything thrown as an ApiError becomes the error envelope with its status, code and
 * message; anything else becomes a 500 with no internals.
 */
export interface ErrorDetail {
  field: string;
  message: string;
}

export class ApiError extends Error {
  readonly status: number;
  readonly code: string;
  readonly details?: ErrorDetail[];

  constructor(status: number, code: string, message: string, details?: ErrorDetail[]) {
    super(message);
    this.status = status;
    this.code = code;
    this.details = details;
  }
}

export const badRequest = (message: string, details?: ErrorDetail[]) =>
  new ApiError(400, "bad_request", message, details);
export const unauthorized = (message: string) => new ApiError(401, "unauthorized", message);
export const forbidden = (message: string) => new ApiError(403, "forbidden", message);
export const notFound = (message: string) => new ApiError(404, "not_found", message);
export const conflict = (message: string, details?: ErrorDetail[]) =>
  new ApiError(409, "conflict", message, details);
