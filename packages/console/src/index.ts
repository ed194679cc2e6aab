// The console's entry (what GET /console.js serves, bundled): adopts its stylesheet (a constructed sheet, which
// the page's strict Content-Security-Policy does not govern), then shows the sign-in or, with a key already in
// this tab's sessionStorage, the console itself.
import { mountConsole } from './console-app.ts';
import { liveRegion } from './dom.ts';
import layout from './layout.css';
import { showSignIn } from './sign-in.ts';
import { clientFor, storedKey, storeKey } from './storage.ts';
import css from './styles.css';

const sheet = new CSSStyleSheet();
sheet.replaceSync(css + layout);
document.adoptedStyleSheets = [...document.adoptedStyleSheets, sheet];

const root = document.getElementById('console');
if (!root) throw new Error('The console page has no #console element');
document.body.append(liveRegion());

function start(message?: string): void {
  const key = storedKey();
  if (key === null) {
    showSignIn(root as HTMLElement, message, (signedIn) => {
      storeKey(signedIn);
      start();
    });
    return;
  }
  mountConsole(root as HTMLElement, clientFor(key), (why) => {
    storeKey(null);
    start(why);
  });
}

start();
