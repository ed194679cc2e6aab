// Stylesheets are imported as their (minified) text: see the css plugin of src/http/widget-routes.ts.
declare module '*.css' {
  const css: string;
  export default css;
}
