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
    /// A field's new value, as typed.
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

#[derive(Properties, PartialEq)]
pub struct FormsProps {
    pub fields: Vec<(Field, String, Option<String>)>,
    pub lang: Lang,
    pub on_edit: Callback<(Field, String)>,
    /// The form's buttons (publish; add a consumer, and the admin calls).
    pub hands: FormHands,
}

/// What the forms' buttons ask for.
#[derive(Clone, PartialEq)]
pub struct FormHands {
    pub publish: Callback<()>,
    pub add_consumer: Callback<()>,
    pub admin: Callback<Admin>,
}

impl FormsProps {
    fn get(&self, f: Field) -> (AttrValue, Option<AttrValue>) {
        self.fields
            .iter()
            .find(|x| x.0 == f)
            .map(|x| (x.1.clone().into(), x.2.clone().map(Into::into)))
            .unwrap_or_default()
    }

    fn field(&self, f: Field, label: &'static str, size: u32, hint: &'static str) -> Html {
        let (value, refusal) = self.get(f);
        html! { <FormField field={f} label={t(self.lang, label)} {value} {refusal} {size} on_edit={self.on_edit.clone()} hint={Some(AttrValue::from(t(self.lang, hint)))}/> }
    }
}

/// Publish: PUB, DPUB (with a delay), MPUB (with a count), or several DPUBs.
#[function_component(PublishForm)]
pub fn publish_form(p: &FormsProps) -> Html {
    let onsubmit = p.hands.publish.reform(|e: SubmitEvent| e.prevent_default());
    html! {
      <form class="publish" {onsubmit} aria-label={t(p.lang, "ui.publish")} novalidate=true>
        <b>{t(p.lang, "ui.publish")}</b>
        { p.field(Field::PubTopic, "ui.f.topic", 10, "ui.h.topic") }
        { p.field(Field::PubBody, "ui.f.body", 10, "ui.h.body") }
        { p.field(Field::PubDelay, "ui.f.delay", 7, "ui.h.delay") }
        { p.field(Field::PubCount, "ui.f.count", 4, "ui.h.count") }
        <button type="submit" data-testid="publish">{t(p.lang, "ui.publish")}</button>
      </form>
    }
}

/// Add a consumer; create or delete a topic or channel (nsqd's HTTP admin calls).
#[function_component(ManageForm)]
pub fn manage_form(p: &FormsProps) -> Html {
    let admin = |a: Admin| p.hands.admin.reform(move |_: MouseEvent| a);
    let add_consumer = p.hands.add_consumer.reform(|_: MouseEvent| ());
    html! {
      <form class="manage" aria-label={t(p.lang, "ui.manage")} onsubmit={Callback::from(|e: SubmitEvent| e.prevent_default())} novalidate=true>
        <b>{t(p.lang, "ui.manage")}</b>
        { p.field(Field::ManageTopic, "ui.f.topic", 10, "ui.h.mtopic") }
        { p.field(Field::ManageChannel, "ui.f.channel", 10, "ui.h.mchannel") }
        { p.field(Field::ManageRdy, "ui.f.rdy", 4, "ui.h.rdy") }
        <span class="buttons">
          <button type="button" data-testid="add-consumer" onclick={add_consumer}>{t(p.lang, "ui.add-consumer")}</button>
          <button type="button" data-testid="create-topic" onclick={admin(Admin::CreateTopic)}>{t(p.lang, "ui.create-topic")}</button>
          <button type="button" data-testid="create-channel" onclick={admin(Admin::CreateChannel)}>{t(p.lang, "ui.create-channel")}</button>
          <button type="button" data-testid="delete-channel" onclick={admin(Admin::DeleteChannel)}>{t(p.lang, "ui.delete-channel")}</button>
          <button type="button" data-testid="delete-topic" onclick={admin(Admin::DeleteTopic)}>{t(p.lang, "ui.delete-topic")}</button>
        </span>
      </form>
    }
}
