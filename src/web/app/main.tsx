/** The dashboard's entry: styles, link handling, and the app. */
import "./styles.css";
import { render } from "preact";
import { App } from "./app.tsx";
import { interceptLinks } from "./router.ts";

interceptLinks(document.body);
render(<App />, document.getElementById("app")!);
