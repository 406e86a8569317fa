/** The dashboard: sign-in until a key pair works, then the pages of the signed-in user. */
import { useEffect, useState } from "preact/hooks";
import { type Keys, onUnauthorised, storedKeys, storeKeys } from "./api.ts";
import { Page } from "./page.tsx";
import { CollectionPage } from "./pages/collection.tsx";
import { CollectionsPage } from "./pages/collections.tsx";
import { NewCollectionPage } from "./pages/new-collection.tsx";
import { SignIn } from "./pages/sign-in.tsx";
import { match, navigate, useLocation } from "./router.ts";

function Routes() {
  const { path } = useLocation();
  if (path === "/" || path === "/collections" || path === "/signin") return <CollectionsPage />;
  if (path === "/collections/new") return <NewCollectionPage />;
  const collection = match("/collections/:name", path) ?? match("/collections/:name/:tab", path);
  if (collection) return <CollectionPage name={collection.name} tab={collection.tab ?? "overview"} />;
  return (
    <Page title="Page not found">
      <p>
        There is no dashboard page at <code>{path}</code>. <a href="/">Go to your collections</a>.
      </p>
    </Page>
  );
}

export function App() {
  const [keys, setKeys] = useState<Keys | undefined>(storedKeys);
  const [reason, setReason] = useState<string>();

  useEffect(
    () =>
      onUnauthorised((message) => {
        storeKeys(undefined);
        setKeys(undefined);
        setReason(message);
      }),
    [],
  );

  if (!keys) {
    return (
      <main id="main" class="sign-in-main">
        <SignIn
          reason={reason}
          onSignedIn={(signedIn) => {
            storeKeys(signedIn);
            setKeys(signedIn);
            setReason(undefined);
            if (window.location.pathname === "/signin") navigate("/", { replace: true });
          }}
        />
      </main>
    );
  }

  return (
    <>
      <a class="skip-link" href="#main">
        Skip to content
      </a>
      <header class="top">
        <a class="brand" href="/">
          <img src="/favicon.svg" alt="" width="24" height="24" />
          Sightline
        </a>
        <nav class="main-nav" aria-label="Main">
          <ul>
            <li>
              <a href="/">Collections</a>
            </li>
            <li>
              <a href="/collections/new">New collection</a>
            </li>
            <li>
              <a href="/docs" target="_blank" rel="noopener">
                API reference
              </a>
            </li>
          </ul>
        </nav>
        <div class="who">
          <span class="key" title="Your access key">
            {keys.accessKey}
          </span>
          <button
            type="button"
            onClick={() => {
              storeKeys(undefined);
              setKeys(undefined);
              setReason("You have signed out.");
            }}
          >
            Sign out
          </button>
        </div>
      </header>
      <main id="main" tabIndex={-1}>
        <Routes />
      </main>
      {/* The network data's licence (CC BY 4.0) asks for this wherever results are shown. */}
      <footer class="attribution">
        Network owners, ASNs and countries:{" "}
        <a href="https://db-ip.com" target="_blank" rel="noopener">
          IP to ASN Lite by DB-IP
        </a>{" "}
        (CC BY 4.0), RouteViews and the RIRs, through ip-location-db.
      </footer>
    </>
  );
}
