// Stylesheets are imported as their (minified) text: see the css plugin of src/http/open/widget.ts.
declare module '*.css' {
  const css: string;
  export default css;
}
