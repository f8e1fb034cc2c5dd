// Prints the imports of a .wasm module and fails if there are any.
const fs = require('fs');
const mod = new WebAssembly.Module(fs.readFileSync(process.argv[2]));
const imports = WebAssembly.Module.imports(mod);
const exported = WebAssembly.Module.exports(mod).map((e) => e.name);
console.log(`imports: ${JSON.stringify(imports)}; exports include probe: ${exported.includes('probe')}`);
if (imports.length !== 0) process.exit(1);
