import { defineConfig } from 'vite';
import react from '@vitejs/plugin-react';

// Everything is bundled into web/dist (no CDN); the server serves it at /.
export default defineConfig({
  root: new URL('.', import.meta.url).pathname,
  plugins: [react()],
  build: { outDir: 'dist', emptyOutDir: true, sourcemap: false },
  server: { proxy: { '/api': { target: 'http://127.0.0.1:8787', ws: true } } },
});
