//! Print the page's Chinese catalogue as `pkg/zh.json` holds it (`scripts/build-web.sh` writes
//! it there; the page loads it when Chinese is first asked for).

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    print!("{}", nsqlab_web::i18n::zh_json());
}

#[cfg(target_arch = "wasm32")]
fn main() {}
