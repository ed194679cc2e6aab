// A stylesheet import is its minified text (the bundler's css-text plugin, src/http/open/widget.ts).
declare module '*.css' {
  const css: string;
  export default css;
}
