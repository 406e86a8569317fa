/** Loading one API resource into a component: its result, the API's error sentence, and a way to reload. */
import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import { ApiFailure, call } from "./api.ts";

export interface Resource<T> {
  data: T | undefined;
  error: ApiFailure | undefined;
  loading: boolean;
  /** Fetches again; `quiet` keeps the current data on screen meanwhile (polling). */
  reload: (quiet?: boolean) => Promise<void>;
}

export function useApi<T>(path: string | undefined): Resource<T> {
  const [state, setState] = useState<{ data?: T; error?: ApiFailure; loading: boolean }>({
    loading: Boolean(path),
  });
  const latest = useRef(0);

  const reload = useCallback(
    async (quiet = false) => {
      if (!path) return;
      const ticket = ++latest.current;
      if (!quiet) setState({ loading: true });
      try {
        const { result } = await call<T>("GET", path);
        if (ticket === latest.current) setState({ data: result, loading: false });
      } catch (error) {
        const failure =
          error instanceof ApiFailure
            ? error
            : new ApiFailure(0, "error", (error as Error).message || String(error));
        if (ticket === latest.current)
          setState((previous) => ({
            data: quiet ? previous.data : undefined,
            error: failure,
            loading: false,
          }));
      }
    },
    [path],
  );

  useEffect(() => {
    reload();
  }, [reload]);

  return { data: state.data, error: state.error, loading: state.loading, reload };
}
