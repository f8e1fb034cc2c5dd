//! The forms: a field whose value lives in the model, publish, and manage.

use super::*;

#[derive(Properties, PartialEq)]
pub struct FieldProps {
    pub field: Field,
    /// The words of its label (already in the page's language).
    pub label: AttrValue,
    pub value: AttrValue,
    pub refusal: Option<AttrValue>,
    pub size: u32,
    /// The field was edited: (which, its new text).
    pub on_edit: Callback<(Field, String)>,
    #[prop_or_default]
    pub hint: Option<AttrValue>,
}

/// A form field whose value lives in the model, with its refusal beside it.
#[function_component(FormField)]
pub fn form_field(p: &FieldProps) -> Html {
    let f = p.field;
    let oninput = p
        .on_edit
        .reform(move |e: InputEvent| (f, e.target_unchecked_into::<HtmlInputElement>().value()));
    let err_id = format!("{}-refusal", f.id());
    html! {
      <label class="field">
        <span class="name">{p.label.clone()}</span>
        <input id={f.id()} value={p.value.clone()} {oninput} size={p.size.to_string()}
               aria-invalid={p.refusal.is_some().then_some("true")}
               aria-describedby={p.refusal.is_some().then(|| err_id.clone())} title={p.hint.clone()}/>
        { for p.refusal.clone().map(|r| html!{ <span class="refusal" id={err_id} role="alert" data-testid={format!("{}-refusal", f.id())}>{r}</span> }) }
      </label>
    }
}

/// A form's field, its value and refusal from `fields`.
fn form_field_of(
    fields: &[(Field, String, Option<String>)],
    lang: Lang,
    on_edit: &Callback<(Field, String)>,
    f: Field,
    label: &'static str,
    size: u32,
    hint: &'static str,
) -> Html {
    let (value, refusal): (AttrValue, Option<AttrValue>) = fields
        .iter()
        .find(|x| x.0 == f)
        .map(|x| (x.1.clone().into(), x.2.clone().map(Into::into)))
        .unwrap_or_default();
    html! { <FormField field={f} label={t(lang, label)} {value} {refusal} {size} on_edit={on_edit.clone()} hint={Some(AttrValue::from(t(lang, hint)))}/> }
}

#[derive(Properties, PartialEq)]
pub struct PublishProps {
    pub fields: Vec<(Field, String, Option<String>)>,
    pub lang: Lang,
    pub on_edit: Callback<(Field, String)>,
    /// Publish what the fields say.
    pub on_publish: Callback<()>,
}

/// Publish: PUB, DPUB (with a delay), MPUB (with a count), or several DPUBs.
#[function_component(PublishForm)]
pub fn publish_form(p: &PublishProps) -> Html {
    let onsubmit = p.on_publish.reform(|e: SubmitEvent| e.prevent_default());
    let field =
        |f, label, size, hint| form_field_of(&p.fields, p.lang, &p.on_edit, f, label, size, hint);
    html! {
      <form class="publish" {onsubmit} aria-label={t(p.lang, "ui.publish")} novalidate=true>
        <b>{t(p.lang, "ui.publish")}</b>
        { field(Field::PubTopic, "ui.f.topic", 10, "ui.h.topic") }
        { field(Field::PubBody, "ui.f.body", 10, "ui.h.body") }
        { field(Field::PubDelay, "ui.f.delay", 7, "ui.h.delay") }
        { field(Field::PubCount, "ui.f.count", 4, "ui.h.count") }
        <button type="submit" data-testid="publish">{t(p.lang, "ui.publish")}</button>
      </form>
    }
}

#[derive(Properties, PartialEq)]
pub struct ManageProps {
    pub fields: Vec<(Field, String, Option<String>)>,
    pub lang: Lang,
    pub on_edit: Callback<(Field, String)>,
    /// Add a consumer as the fields say.
    pub on_add_consumer: Callback<()>,
    /// One of nsqd's admin calls on the topic or channel the fields name.
    pub on_admin: Callback<Admin>,
}

/// Add a consumer; create or delete a topic or channel (nsqd's HTTP admin calls).
#[function_component(ManageForm)]
pub fn manage_form(p: &ManageProps) -> Html {
    let admin = |a: Admin| p.on_admin.reform(move |_: MouseEvent| a);
    let add = p.on_add_consumer.reform(|_: MouseEvent| ());
    let field =
        |f, label, size, hint| form_field_of(&p.fields, p.lang, &p.on_edit, f, label, size, hint);
    html! {
      <form class="manage" aria-label={t(p.lang, "ui.manage")} onsubmit={Callback::from(|e: SubmitEvent| e.prevent_default())} novalidate=true>
        <b>{t(p.lang, "ui.manage")}</b>
        { field(Field::ManageTopic, "ui.f.topic", 10, "ui.h.mtopic") }
        { field(Field::ManageChannel, "ui.f.channel", 10, "ui.h.mchannel") }
        { field(Field::ManageRdy, "ui.f.rdy", 4, "ui.h.rdy") }
        <span class="buttons">
          <button type="button" data-testid="add-consumer" onclick={add}>{t(p.lang, "ui.add-consumer")}</button>
          <button type="button" data-testid="create-topic" onclick={admin(Admin::CreateTopic)}>{t(p.lang, "ui.create-topic")}</button>
          <button type="button" data-testid="create-channel" onclick={admin(Admin::CreateChannel)}>{t(p.lang, "ui.create-channel")}</button>
          <button type="button" data-testid="delete-channel" onclick={admin(Admin::DeleteChannel)}>{t(p.lang, "ui.delete-channel")}</button>
          <button type="button" data-testid="delete-topic" onclick={admin(Admin::DeleteTopic)}>{t(p.lang, "ui.delete-topic")}</button>
        </span>
      </form>
    }
}
