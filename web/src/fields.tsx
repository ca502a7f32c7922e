import { cloneElement, isValidElement, type ReactElement, type ReactNode } from 'react';
import { ApiError } from './api.js';

/**
 * A labelled control with the server's validation message for its path next to it. A
 * plain control (input, select, textarea) is described by its hint and error and marked
 * invalid while it has one, so a screen reader reads why when it reaches it.
 */
export function Field({ id, label, error, children, hint }: { id: string; label: string; error?: string | undefined; hint?: string; children: ReactNode }) {
  const describedBy = [hint ? `${id}-hint` : undefined, error ? `${id}-error` : undefined].filter(Boolean).join(' ');
  const control =
    isValidElement(children) && typeof children.type === 'string'
      ? cloneElement(children as ReactElement<Record<string, unknown>>, {
          ...(describedBy ? { 'aria-describedby': describedBy } : {}),
          'aria-invalid': Boolean(error),
        })
      : children;
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      {control}
      {hint && <p className="muted" id={`${id}-hint`}>{hint}</p>}
      {error && (
        <p className="field-error" id={`${id}-error`} role="alert">
          {error}
        </p>
      )}
    </div>
  );
}

/** The message for a field from a refused request, or undefined. */
export function fieldError(error: unknown, path: string): string | undefined {
  return error instanceof ApiError ? error.fieldError(path) : undefined;
}

/** A refusal not tied to one of the given fields, for a message above the form. */
export function formError(error: unknown, paths: string[]): string | undefined {
  if (!error) return undefined;
  if (!(error instanceof ApiError)) return String(error);
  if (error.details.length > 0 && error.details.every((detail) => paths.some((path) => detail.path === path || detail.path.startsWith(`${path}/`)))) return undefined;
  return `${error.code}: ${error.message}`;
}
